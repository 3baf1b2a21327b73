"""The route stage's decisions, without sockets: the ring (consistent hashing with bounded
loads), the routing key, the prefix picture, health and ejection, the policies' plans."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmclient import OpenAI, Replica, Replicas
from llmclient.features.route.affinity import PrefixIndex
from llmclient.features.route.health import Ejection, Health, on_failure, on_success, state
from llmclient.features.route.key import BLOCK_CHARS, MAX_BLOCKS, RouteKey, route_key
from llmclient.features.route.ring import Ring, bound, hash64, pick_bounded
from llmclient.features.route.router import Router, holder_keeps, plan

NAMES = st.lists(st.text("abcdefgh0123456789", min_size=1, max_size=8), min_size=1, max_size=8, unique=True)
KEYS = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=200)


# -- ring ------------------------------------------------------------------------------------

@given(NAMES, KEYS)
def test_a_walk_visits_every_replica_once(names: list[str], keys: list[int]) -> None:
    ring = Ring(names)
    for key in keys:
        assert sorted(ring.walk(key)) == list(range(len(names)))


@given(NAMES, st.text("xyz", min_size=1, max_size=4), KEYS)
def test_a_joining_replica_takes_keys_only_for_itself(names: list[str], new: str, keys: list[int]) -> None:
    before = Ring(names)
    after = Ring([*names, new])
    for key in keys:
        old_owner = names[before.walk(key)[0]]
        new_owner = [*names, new][after.walk(key)[0]]
        assert new_owner in (old_owner, new)


@given(NAMES.filter(lambda n: len(n) >= 2), st.data(), KEYS)
def test_a_leaving_replica_moves_only_its_own_keys(names: list[str], data: st.DataObject, keys: list[int]) -> None:
    gone = data.draw(st.sampled_from(names))
    rest = [n for n in names if n != gone]
    before, after = Ring(names), Ring(rest)
    for key in keys:
        old_owner = names[before.walk(key)[0]]
        if old_owner != gone:
            assert rest[after.walk(key)[0]] == old_owner
        # the rest of the walk keeps its order: a key's second choice is its new first
        assert [names[i] for i in before.walk(key) if names[i] != gone] == [rest[i] for i in after.walk(key)]


@settings(max_examples=60)
@given(st.integers(1, 6), st.lists(st.tuples(st.booleans(), st.integers(0, 2**64 - 1)), max_size=300),
       st.sampled_from([1.0, 1.1, 1.25, 2.0]), st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=6, max_size=6))
def test_bounded_load_is_never_exceeded(n: int, events: list[tuple[bool, int]], c: float,
                                        weights: list[float]) -> None:
    ring = Ring([f"r{i}" for i in range(n)], weights[:n])
    load = [0] * n
    total_weight = sum(weights[:n])
    for arrive, key in events:
        if arrive or not any(load):
            order = ring.walk(key)
            total = sum(load)
            i = pick_bounded(order, lambda j: load[j], lambda j: weights[j], c)
            # the replica taking the call stays within ceil(c x (m+1) x w / W)
            assert load[i] + 1 <= bound(c, total, weights[i], total_weight)
            # and it is the first on the walk with room: the ones before it were full
            for j in order[:order.index(i)]:
                assert load[j] + 1 > bound(c, total, weights[j], total_weight)
            load[i] += 1
        else:
            busy = [j for j in range(n) if load[j]]
            load[busy[key % len(busy)]] -= 1


def test_weights_share_the_ring() -> None:
    ring = Ring(["a", "b"], [3.0, 1.0])
    owners = [ring.walk(hash64(str(k).encode()))[0] for k in range(4000)]
    share = owners.count(0) / len(owners)
    assert 0.6 < share < 0.9  # ~3/4


def test_ring_names_must_be_distinct() -> None:
    with pytest.raises(ValueError, match="distinct"):
        Ring(["a", "a"])


# -- key -------------------------------------------------------------------------------------

SYSTEM = "You are a careful assistant. " * 40  # > one block


def _chat(*turns: str, system: str = SYSTEM) -> dict:
    messages = [{"role": "system", "content": system}]
    for n, text in enumerate(turns):
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": text})
    return {"model": "m", "messages": messages}


def test_the_same_prompt_has_the_same_key_and_a_shared_system_prompt_spreads() -> None:
    a = route_key("/chat/completions", _chat("hello"))
    assert route_key("/chat/completions", _chat("hello")) == a and a.ring is not None
    b = route_key("/chat/completions", _chat("something else entirely"))
    assert a.ring != b.ring  # the deepest block places it: sessions spread
    assert a.blocks[:4] == b.blocks[:4]  # while their shared blocks are the same


def test_a_long_conversation_keeps_its_ring_key() -> None:
    document = "A long shared document. " * 800  # past MAX_BLOCKS blocks
    first = route_key("/chat/completions", _chat(document))
    later = route_key("/chat/completions", _chat(document, "an answer", "a follow-up"))
    assert len(first.blocks) == MAX_BLOCKS and first.ring == later.ring


def test_a_conversation_s_next_turn_extends_its_blocks() -> None:
    first = route_key("/chat/completions", _chat("q1 " * 100))
    second = route_key("/chat/completions", _chat("q1 " * 100, "a1 " * 100, "q2"))
    assert len(second.blocks) > len(first.blocks)
    assert second.blocks[:len(first.blocks)] == first.blocks


def test_blocks_are_chained_and_never_the_text() -> None:
    key = route_key("/chat/completions", _chat("x"))
    assert all(isinstance(b, int) for b in key.blocks)
    other = route_key("/chat/completions", _chat("x", system="Different. " + SYSTEM))
    assert not set(key.blocks) & set(other.blocks)  # a changed first block changes every block


def test_the_app_s_key_wins() -> None:
    a = route_key("/chat/completions", {**_chat("one"), "prompt_cache_key": "tenant-7"})
    b = route_key("/chat/completions", {**_chat("two", system="other"), "prompt_cache_key": "tenant-7"})
    assert a == b and a.blocks == ()
    by_user = route_key("/chat/completions", {**_chat("one"), "user": "u1"})
    assert by_user.ring is not None and by_user != a


def test_no_key_for_embeddings_and_bodiless_calls() -> None:
    assert route_key("/embeddings", {"input": "x" * 1000, "model": "e"}) == RouteKey(None)
    assert route_key("/models", None) == RouteKey(None)


def test_completions_and_responses_have_keys() -> None:
    assert route_key("/completions", {"model": "m", "prompt": "p" * 600}).blocks
    r = route_key("/responses", {"model": "m", "instructions": SYSTEM, "input": "hi"})
    assert len(r.blocks) >= 1


def test_stable_across_processes() -> None:
    import subprocess
    import sys
    code = ("from llmclient.features.route.key import route_key; "
            f"print(route_key('/chat/completions', {_chat('hi')!r}).ring)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) == route_key("/chat/completions", _chat("hi")).ring


def test_a_short_prompt_still_has_a_ring_key() -> None:
    key = route_key("/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert key.ring is not None and key.blocks == ()
    assert len("hi") < BLOCK_CHARS


# -- prefix picture ---------------------------------------------------------------------------

def test_the_index_finds_the_longest_holder() -> None:
    index = PrefixIndex(3, capacity=100)
    index.record(0, [1, 2])
    index.record(2, [1, 2, 3, 4])
    assert index.best([1, 2, 3, 4, 5], [0, 1, 2]) == (2, 4)
    assert index.best([1, 2], [0, 2]) == (0, 2)  # a tie: the earlier one
    assert index.best([9], [0, 1, 2]) == (None, 0)
    index.forget(2)
    assert index.match(2, [1]) == 0


def test_the_index_forgets_the_least_recently_used() -> None:
    index = PrefixIndex(1, capacity=3)
    index.record(0, [1, 2, 3])
    index.record(0, [1])       # 1 is fresh again
    index.record(0, [4])       # 2 goes
    assert index.match(0, [1]) == 1 and index.match(0, [2]) == 0 and index.match(0, [3]) == 1


# -- health ----------------------------------------------------------------------------------

def test_a_connection_failure_ejects_at_once_and_a_probe_brings_it_back() -> None:
    h, policy = Health(), Ejection(consecutive=3, cooldown_s=5.0, max_cooldown_s=60.0)
    assert on_failure(h, "refused", now=100.0, policy=policy, at_once=True)
    assert state(h, 104.9) == "down" and state(h, 105.0) == "probe"
    h.probing = True
    assert state(h, 105.0) == "down"  # one probe at a time
    on_success(h, 12.0, None)
    assert state(h, 105.0) == "up" and h.ejections == 0 and h.ttft_ms == 12.0


def test_a_failed_probe_doubles_the_cooldown_up_to_the_cap() -> None:
    h, policy = Health(), Ejection(consecutive=3, cooldown_s=5.0, max_cooldown_s=12.0)
    on_failure(h, "refused", 0.0, policy, at_once=True)
    assert h.ejected_until == 5.0
    h.probing = True
    assert on_failure(h, "refused", 5.0, policy)  # a failed probe: out again at once
    assert h.ejected_until == 15.0
    h.probing = True
    on_failure(h, "refused", 15.0, policy)
    assert h.ejected_until == 27.0  # capped at 12 s


def test_5xx_eject_after_consecutive_failures_only() -> None:
    h, policy = Health(), Ejection(consecutive=3)
    assert not on_failure(h, "HTTP 500", 0.0, policy)
    assert not on_failure(h, "HTTP 500", 0.0, policy)
    on_success(h, None, None)
    assert not on_failure(h, "HTTP 500", 0.0, policy)
    assert not on_failure(h, "HTTP 500", 0.0, policy)
    assert on_failure(h, "HTTP 500", 0.0, policy)
    assert 0 < h.error_rate < 1


def test_ewma_follows_the_samples() -> None:
    h = Health()
    for _ in range(50):
        on_success(h, 100.0, 5.0)
    assert h.ttft_ms == pytest.approx(100.0) and h.queue_ms == pytest.approx(5.0)


# -- plans -----------------------------------------------------------------------------------

def _fleet(n: int, policy: str = "prefix") -> Router:
    return Replicas([f"http://127.0.0.1:{9000 + i}/v1" for i in range(n)], policy=policy).router()  # type: ignore[arg-type]


def test_a_plan_orders_every_replica_healthy_first() -> None:
    router = _fleet(4)
    key = route_key("/chat/completions", _chat("hi"))
    router.health[1].ejected_until = 1e18  # down
    order = router.plan(key)
    assert sorted(order) == [0, 1, 2, 3] and order[-1] == 1


def test_prefix_policy_keeps_a_key_on_one_replica_until_it_is_full() -> None:
    router = _fleet(4)
    key = route_key("/chat/completions", _chat("hi"))
    first = router.plan(key)[0]
    assert all(router.plan(key)[0] == first for _ in range(10))
    router.health[first].in_flight = 10  # far above 1.25 x its share
    assert router.plan(key)[0] != first


def test_prefix_policy_follows_the_longest_cached_prefix() -> None:
    router = _fleet(4)
    key = route_key("/chat/completions", _chat("q1 " * 200, "a1 " * 200, "q2"))
    ring_first = router.plan(key)[0]
    other = (ring_first + 1) % 4
    router.index.record(other, key.blocks[:-1])  # the conversation's last turn ran there
    assert router.plan(key)[0] == other


def test_the_holder_keeps_a_call_a_few_calls_beyond_its_bound() -> None:
    loads = [5, 3, 3, 2]  # 13 in flight: the holder's bound is ceil(1.25 x 14 / 4) = 5
    load, even = (lambda i: loads[i]), (lambda i: 1.0)
    assert pick_bounded([0, 1, 2, 3], load, even, 1.25) != 0  # the bound alone spills it
    assert holder_keeps(0, [0, 1, 2, 3], load, even, 1.25)  # 5 < 5 + 4
    loads[0] = 10
    assert not holder_keeps(0, [0, 1, 2, 3], load, even, 1.25)  # bound ceil(1.25 x 19 / 4) = 6, 4 beyond
    assert holder_keeps(0, [0, 1, 2, 3], load, even, 1.25, slack=5)
    loads[0] = 5
    assert not holder_keeps(0, [0, 1, 2, 3], load, even, 1.25, slack=0)


def test_a_slow_holder_gets_no_slack() -> None:
    loads = [2, 3, 3, 3]
    weights = [0.2, 1.0, 1.0, 1.0]  # five times slower: its weight scaled down
    load, weight = (lambda i: loads[i]), (lambda i: weights[i])
    # bound ceil(1.25 x 12 x 0.2 / 3.2) = 1; slack floor(4 x 0.2 / 0.8) = 1: two calls at most
    assert not holder_keeps(0, [0, 1, 2, 3], load, weight, 1.25)
    loads[0] = 1
    assert holder_keeps(0, [0, 1, 2, 3], load, weight, 1.25)
    weights[0] = 0.1  # floor(4 x 0.1 / 0.775) = 0: the bound alone
    assert not holder_keeps(0, [0, 1, 2, 3], load, weight, 1.25)


@settings(max_examples=60)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=6), st.data(), st.sampled_from([1.0, 1.25, 2.0]),
       st.integers(0, 8))
def test_the_holder_keeps_exactly_below_bound_plus_slack(loads: list[int], data: st.DataObject, c: float,
                                                         slack: int) -> None:
    holder = data.draw(st.integers(0, len(loads) - 1))
    order = list(range(len(loads)))
    keeps = holder_keeps(holder, order, lambda i: loads[i], lambda i: 1.0, c, slack)
    assert keeps == (loads[holder] < bound(c, sum(loads), 1.0, float(len(loads))) + slack)


def test_a_conversation_stays_on_its_replica_a_little_above_its_share() -> None:
    router = _fleet(4)
    key = route_key("/chat/completions", _chat("q1 " * 200, "a1 " * 200, "q2"))
    holder = (router.plan(key)[0] + 1) % 4
    router.index.record(holder, key.blocks)
    for i, h in enumerate(router.health):
        h.in_flight = 5 if i == holder else 3  # the bound alone (5) would spill it
    assert router.plan(key)[0] == holder
    router.health[holder].in_flight = 12
    assert router.plan(key)[0] != holder


def test_a_slow_replica_spills_sooner() -> None:
    health = [Health(in_flight=4, ttft_ms=100.0), Health(in_flight=4, ttft_ms=100.0),
              Health(in_flight=4, ttft_ms=100.0), Health(in_flight=2, ttft_ms=1000.0)]
    ring = Ring(["a", "b", "c", "d"])
    key = next(RouteKey(k) for k in range(0, 2**64, 2**58) if ring.walk(k)[0] == 3)
    order = plan("prefix", key, health, [1.0] * 4, ring, PrefixIndex(4), 0, 1.25, 0.0)
    assert order[0] != 3  # below its share, but ten times slower: its bound shrank to 1
    health[3].ttft_ms = 100.0
    assert plan("prefix", key, health, [1.0] * 4, ring, PrefixIndex(4), 0, 1.25, 0.0)[0] == 3


def test_round_robin_and_least_loaded() -> None:
    rr = _fleet(3, "round_robin")
    firsts = [rr.plan(RouteKey(1))[0] for _ in range(6)]
    assert sorted(firsts) == [0, 0, 1, 1, 2, 2]
    ll = _fleet(3, "least_loaded")
    ll.health[0].in_flight, ll.health[1].in_flight = 3, 1
    assert ll.plan(RouteKey(1))[0] == 2


def test_a_hedge_copy_starts_at_the_second_choice() -> None:
    router = _fleet(3)
    key = route_key("/chat/completions", _chat("hi"))
    assert router.plan(key, second=True)[0] == router.plan(key)[1]


def test_all_down_tries_the_soonest_back_first() -> None:
    router = _fleet(3)
    for i, until in enumerate((1e18, 5e17, 7e17)):
        router.health[i].ejected_until = until
    assert router.plan(RouteKey(None)) == [1, 2, 0]


# -- the API's bad input ------------------------------------------------------------------------

@pytest.mark.parametrize(("urls", "message"), [
    ([], "non-empty list"),
    (["http://a/v1", "http://a/v1/"], "listed twice"),
    (["ftp://a/v1"], "http:// or https://"),
    ([Replica("http://a/v1", weight=0)], "weight must be positive"),
])
def test_bad_replica_lists_fail_at_once(urls: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAI(api_key="k", base_url=urls)


def test_bad_policy_and_balance() -> None:
    with pytest.raises(ValueError, match="policy"):
        Replicas(["http://a/v1"], policy="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="balance"):
        Replicas(["http://a/v1"], balance=0.5)


def test_a_replica_s_key_is_never_shown() -> None:
    assert "secret" not in repr(Replicas([Replica("http://a/v1", api_key="secret")]))


def test_copies_share_the_fleet_s_view() -> None:
    client = OpenAI(api_key="k", base_url=["http://a/v1", "http://b/v1"])
    copy = client.with_options(timeout=3.0)
    assert copy._router is client._router and str(copy.base_url) == "http://a/v1/"
    assert OpenAI(api_key="k", base_url="http://a/v1")._router is None


def test_model_mismatch_names_each_replica() -> None:
    from llmclient.features.route.router import model_mismatch

    assert model_mismatch({"http://a/v1": ["m"], "http://b/v1": ["m"]}) is None
    assert model_mismatch({"http://a/v1": ["m", "n"], "http://b/v1": ["n", "m"]}) is None  # order
    assert model_mismatch({"http://a/v1": ["m"], "http://b/v1": None}) is None  # not a list: no say
    problem = model_mismatch({"http://a/v1": ["m"], "http://b/v1": ["x"]})
    assert problem is not None and "http://a/v1: m" in problem and "http://b/v1: x" in problem


def test_model_labels_name_the_weights_behind_a_served_name() -> None:
    from llmclient.features.route.router import model_labels, model_mismatch

    # vLLM: {"id": <--served-model-name>, "root": <the model path>}; OpenAI lists no root
    assert model_labels([{"id": "gpt-4o", "object": "model"}]) == ["gpt-4o"]
    assert model_labels([{"id": "m", "root": "m"}, {"id": "llama", "root": "meta/Llama-3.1-8B"}]) == [
        "m", "llama (meta/Llama-3.1-8B)"]
    assert model_labels([{"id": "m", "root": None}, {"id": "n", "root": ""}]) == ["m", "n"]
    for not_a_list in (None, {"id": "m"}, [{"name": "m"}], ["m"]):
        assert model_labels(not_a_list) is None
    # one served name over two checkpoints (a rolling upgrade half done): the replicas differ
    a = model_labels([{"id": "llama", "root": "meta/Llama-3.1-8B"}])
    b = model_labels([{"id": "llama", "root": "meta/Llama-3.3-8B"}])
    problem = model_mismatch({"http://a/v1": a, "http://b/v1": b})
    assert problem is not None and "llama (meta/Llama-3.1-8B)" in problem and "llama (meta/Llama-3.3-8B)" in problem


def test_model_not_found_reads_the_error_code() -> None:
    from llmclient.features.route.attempt import model_not_found

    body = b'{"error": {"message": "no such model", "type": "invalid_request_error", "code": "model_not_found"}}'
    assert model_not_found(404, body)
    assert not model_not_found(400, body)
    assert not model_not_found(404, b'{"error": {"code": "not_found"}}')
    assert not model_not_found(404, b"<html>not found</html>")
    assert not model_not_found(404, b'["error"]')
    assert not model_not_found(404, b'{"error": "model_not_found"}')
