from llmclient.speculative import (
    CallbackPredictor,
    FixedPredictor,
    HistoryPredictor,
    Prediction,
    TemplatePredictor,
    as_predictor,
    safe_predict,
    turn_kind,
)

REQ = {"model": "m", "messages": [{"role": "user", "content": "Summarize the report please"}]}
ANS = {"choices": [{"message": {"role": "assistant", "content": "It says sales rose.\nMore."}}]}


def test_fixed_and_template_predictors():
    assert [p.text for p in FixedPredictor(["continue", ""])(REQ, ANS)] == ["continue"]
    t = TemplatePredictor(["Translate to French: {first_line}", "Why? ({last_user})"])
    assert [p.text for p in t(REQ, ANS)] == [
        "Translate to French: It says sales rose.",
        "Why? (Summarize the report please)",
    ]


def test_template_predictor_skips_tool_call_answers():
    ans = {"choices": [{"message": {"content": None, "tool_calls": [{"id": "x"}]}}]}
    assert TemplatePredictor(["{answer}"])(REQ, ans) == []


def test_history_predictor_learns_from_scripted_sessions():
    h = HistoryPredictor(threshold=0.3, min_support=2)
    for _ in range(3):
        h.observe_conversation(["summarize this text", "make it shorter", "translate to German"])
    h.observe_conversation(["summarize that", "who wrote it?"])
    preds = h(REQ | {"messages": [{"role": "user", "content": "Summarize the memo"}]}, ANS)
    assert [p.text for p in preds] == ["make it shorter"]
    assert abs(preds[0].confidence - 0.75) < 1e-9
    # an unseen kind of turn predicts nothing
    assert h({"messages": [{"role": "user", "content": "hello there"}]}, ANS) == []


def test_history_observe_pairs_requests():
    h = HistoryPredictor(min_support=1, threshold=0.0)
    prev = {"messages": [{"role": "user", "content": "explain quantum"}]}
    nxt = {"messages": [*prev["messages"], {"role": "assistant", "content": "..."}, {"role": "user", "content": "simpler"}]}
    h.observe(prev, nxt)
    assert [p.text for p in h(prev, ANS)] == ["simpler"]
    assert turn_kind("Could you explain, quantum things!") == "explain"


def test_safe_predict_contains_bad_predictors():
    def boom(req, ans):
        raise RuntimeError("bad model")

    preds, err = safe_predict(CallbackPredictor(boom), REQ, ANS, 3)
    assert preds == [] and "RuntimeError" in err
    preds, err = safe_predict(lambda r, a: 42, REQ, ANS, 3)  # type: ignore[arg-type, return-value]
    assert preds == [] and "int" in err
    preds, err = safe_predict(lambda r, a: ["ok", 7], REQ, ANS, 3)  # type: ignore[arg-type, return-value]
    assert [p.text for p in preds] == ["ok"] and "junk" in err


def test_safe_predict_orders_by_confidence_and_limits():
    preds, err = safe_predict(
        lambda r, a: [Prediction("a", 0.2), Prediction("b", 0.9), Prediction("a", 0.5), "c"], REQ, ANS, 2
    )
    assert err is None and [p.text for p in preds] == ["c", "b"]


def test_as_predictor_accepts_lists_and_callables():
    assert [p.text for p in as_predictor(["x"])(REQ, ANS)] == ["x"]
    assert [p.text for p in as_predictor(lambda r, a: ["y"])(REQ, ANS)] == ["y"]
    try:
        as_predictor([1, 2])
    except TypeError as exc:
        assert "strings" in str(exc)
    else:
        raise AssertionError("a list of ints must be refused")
