"""The agent's state after every round is stored as a delta (lists that only grew carry their new items) and
folds back to the full state: in memory, on disk, after a resume, and for logs written before the format."""

import json

import pytest

from engine.attacker_states import apply_delta, full_states, last_state, state_delta
from engine.config import ExtractionConfig
from engine.events import AttackerState, event_from_dict, jsonable, read_jsonl
from engine.runs.extraction import ExtractionRun

SMALL = {
    "generator": "local",
    "generator_params": {"model": "smollm2-135m", "max_tokens": 32},
    "attacker_llm": "local",
    "attacker_llm_params": {"model": "smollm2-135m", "max_tokens": 16},
    "max_tokens": 32,
    "answer_budget": "fixed",
    "top_k": 2,
    "data_dir": "",
}


def _event(rnd, state, appended=None):
    return AttackerState(seq=rnd, run_id="r", round=rnd, agent="a", state=state, appended=appended or {})


def test_a_list_that_only_grew_is_written_as_its_new_items():
    prev = {"n": 1, "vecs": [[0.1, 0.2]], "queue": ["a", "b"], "tags": []}
    new = {"n": 2, "vecs": [[0.1, 0.2], [0.3, 0.4]], "queue": ["b", "c"], "tags": ["x"]}
    whole, appended = state_delta(prev, new)
    assert appended == {"vecs": [[0.3, 0.4]], "tags": ["x"]}  # grew at its end
    assert whole == {"n": 2, "queue": ["b", "c"]}  # changed inside (a queue): whole
    assert state_delta(None, new) == (new, {})  # the first round is whole
    assert apply_delta(prev, _event(2, whole, appended)) == new
    # an old log (every state whole) folds to itself
    old = [_event(1, prev), _event(2, new)]
    assert full_states(old) == {1: prev, 2: new} and last_state(old) == ("a", 2, new)
    assert last_state([]) == ("", 0, {})


def test_a_delta_without_its_base_is_a_clear_error():
    with pytest.raises(ValueError, match="appends to 'vecs'.*missing an earlier round"):
        full_states([_event(3, {"n": 3}, {"vecs": [[1.0]]})])


@pytest.mark.slow
def test_a_worm_run_writes_deltas_that_fold_back_and_resumes_from_them(tmp_path):
    cfg = ExtractionConfig.from_dict(
        {**SMALL, "attack": "worm", "rounds": 3, "attack_params": {"swap_iters": 4, "min_chunk_words": 2}}
    )
    whole = ExtractionRun(cfg, out_dir=tmp_path / "whole")
    whole.run()
    states = [e for e in whole.events if isinstance(e, AttackerState)]
    assert len(states) == 3 and not states[0].appended
    # after the first round the vectors of extracted chunks and the drift history only grow: new items only
    assert {"extracted_vecs", "history"} <= set(states[1].appended) and "extracted_vecs" not in states[1].state
    assert len(states[2].appended["history"]) == 1
    final = jsonable(whole.agent.state())
    assert full_states(whole.events)[3] == final
    on_disk = read_jsonl(whole.out_dir / "events.jsonl")
    assert last_state(on_disk) == ("worm", 3, final)
    # the log no longer grows with the square of the rounds: every extracted chunk's vector is written once
    assert final["n_extracted"] > 0 and len(final["extracted_vecs"]) == final["n_extracted"]
    written = [
        v for e in states for v in (e.state.get("extracted_vecs") or []) + (e.appended.get("extracted_vecs") or [])
    ]
    assert written == final["extracted_vecs"]
    # cut short after round 2, resumed, played to 3: the same state as the run never stopped
    cut = ExtractionRun(cfg, out_dir=tmp_path / "cut")
    cut.prepare()
    cut.step()
    cut.step()
    cut.close()
    resumed = ExtractionRun.resume(cut.out_dir)
    try:
        assert last_state(resumed.events)[1] == 2
        resumed.step()
        resumed.finish()
    finally:
        resumed.close()
    assert full_states(read_jsonl(cut.out_dir / "events.jsonl"))[3] == final
    back = event_from_dict(json.loads(json.dumps(jsonable(states[1].to_dict()))))
    assert back == states[1]


def test_a_log_written_whole_is_compacted_to_deltas_with_the_same_states(tmp_path):
    """``scripts/compact_run_events.py`` on a log in the old format (every state whole): same events, same
    folded states, each growing list's items written once; plain and gzipped files alike."""
    import gzip
    import subprocess
    import sys
    from pathlib import Path

    from engine.events import event_to_json, read_events

    states = [{"n": r, "vecs": [[float(i)] * 4 for i in range(2 * r)], "queue": [r]} for r in range(1, 6)]
    old = [_event(r, s) for r, s in enumerate(states, 1)]
    text = "".join(event_to_json(e) + "\n" for e in old)
    (tmp_path / "events.jsonl").write_text(text)
    with gzip.open(tmp_path / "events.jsonl.gz", "wt") as f:
        f.write(text)
    script = Path(__file__).resolve().parents[2] / "scripts" / "compact_run_events.py"
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("MB ->") == 2
    for name in ("events.jsonl", "events.jsonl.gz"):
        events, dropped = read_events(tmp_path / name)
        assert dropped == 0 and [e.seq for e in events] == [e.seq for e in old]
        assert full_states(events) == full_states(old)
        assert sum(len(e.state.get("vecs", [])) + len(e.appended.get("vecs", [])) for e in events) == 10
    r = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "nothing")], capture_output=True, text=True, timeout=120
    )
    assert r.returncode != 0 and "not a run folder" in r.stderr
