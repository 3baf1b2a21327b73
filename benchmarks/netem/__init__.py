"""Network emulation for the benchmarks: a real, shaped path between client and server.

The userspace path works everywhere: a TCP forwarder on 127.0.0.1 charges every byte that
crosses it the profile's delay, jitter, bandwidth and loss, and every new connection its
handshake round trip, so TCP and TLS handshakes, HTTP/2 frames and uploads all pay the
network like they would on a real one.

    from llmclient_bench.netem import Network, measure_network

    with Network(profile="wan", upstream=("127.0.0.1", 8000)) as net:
        print(measure_network(net))          # achieved RTT, bandwidth, forwarder cost
        client = OpenAI(base_url=net.url + "/v1")

As root on Linux, `NetnsLink` adds a kernel path: the server runs in a network namespace
behind a veth pair shaped by tbf, and `Network(..., netns=link)` adds the delay.
`DualStackLink` is one whose name resolves to IPv6 then IPv4 inside the namespace, with the
IPv6 route blackholed on demand (Happy Eyeballs, `python -m benchmarks.reliability eyeballs`).

CLI: `python -m benchmarks.netem --profile wan --upstream 127.0.0.1:8000 --listen 127.0.0.1:9000`.
"""

from ._dualstack import DualStackLink, dualstack_supported
from ._forwarder import Forwarder, ForwarderStats
from ._netns import NetnsError, NetnsLink, cleanup_leftovers, netem_available, netns_supported
from ._network import Network, format_measurement, measure_network
from ._profiles import PROFILES, NetworkProfile, get_profile, parse_profile
from ._shaper import DirectionShaper, handshake_delay_s

__all__ = [
    "PROFILES",
    "DirectionShaper",
    "DualStackLink",
    "Forwarder",
    "ForwarderStats",
    "NetnsError",
    "NetnsLink",
    "Network",
    "NetworkProfile",
    "cleanup_leftovers",
    "dualstack_supported",
    "format_measurement",
    "get_profile",
    "handshake_delay_s",
    "measure_network",
    "netem_available",
    "netns_supported",
    "parse_profile",
]
