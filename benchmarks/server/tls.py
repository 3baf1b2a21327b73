"""A throwaway certificate authority and a server certificate for 127.0.0.1 / localhost.

Used when ``--tls`` is given without ``--cert``/``--key``. Clients trust the generated CA
(``ca.pem``), never the server certificate alone, as they would in production; the server
certificate carries the SubjectAltNames (RFC 6125: clients match SAN, not CN) and the key
identifiers that strict X.509 verification (OpenSSL 3 / Python 3.13 VERIFY_X509_STRICT)
requires. Generated with the ``openssl`` command line tool (present wherever Python's ssl is
built against OpenSSL), so the server needs no extra Python dependency.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CertPaths", "TlsSetupError", "generate_certs"]

_DAYS = "30"
_CA_EXT = (
    "basicConstraints=critical,CA:TRUE\n"
    "keyUsage=critical,keyCertSign,cRLSign\n"
    "subjectKeyIdentifier=hash\n"
)
_SERVER_EXT = (
    "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
    "basicConstraints=critical,CA:FALSE\n"
    "keyUsage=critical,digitalSignature\n"
    "extendedKeyUsage=serverAuth\n"
    "subjectKeyIdentifier=hash\n"
    "authorityKeyIdentifier=keyid,issuer\n"
)


class TlsSetupError(RuntimeError):
    """The certificates could not be generated."""


@dataclass(frozen=True)
class CertPaths:
    ca: Path       # the CA bundle clients trust
    cert: Path     # server certificate chain
    key: Path      # server private key


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise TlsSetupError("the openssl command is needed to generate a certificate; pass --cert and --key")
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise TlsSetupError(f"openssl {args[0]} failed: {proc.stderr.strip()}")


def generate_certs(directory: Path) -> CertPaths:
    """Write ca.pem, server.pem and server.key (EC P-256) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.ext").write_text(_CA_EXT)
    (directory / "server.ext").write_text(_SERVER_EXT)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", _DAYS,
             "-subj", "/CN=llmclient reference server test CA", "-extensions", "v3_ca",
             "-config", _config(directory, "ca.ext"), cwd=directory)
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost",
             cwd=directory)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", _DAYS,
             "-extfile", "server.ext", cwd=directory)
    return CertPaths(directory / "ca.pem", directory / "server.pem", directory / "server.key")


def _config(directory: Path, ext_name: str) -> str:
    """A minimal openssl config whose v3_ca section holds the CA extensions."""
    path = directory / "ca.cnf"
    ext = (directory / ext_name).read_text()
    path.write_text("[req]\ndistinguished_name=dn\n[dn]\n[v3_ca]\n" + ext)
    return path.name
