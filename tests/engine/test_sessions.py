"""Sessions of one app process share the loaded models (the app caches them once): several runs stepping the
same local model at the same moment must each get what they would get alone. Real models, real Chroma."""

import pytest
import threading

from engine.config import ExtractionConfig
from engine.events import Generated, QueryIssued
from engine.runs.extraction import ExtractionRun

CFG = {
    "kb": "clinic_records",
    "attack": "rag-thief",
    "rounds": 3,
    "top_k": 2,
    "seed": 7,
    "generator": "local",
    "generator_params": {"model": "smollm2-135m", "max_tokens": 40},
    "attacker_llm": "local",
    "attacker_llm_params": {"model": "smollm2-135m", "max_tokens": 24},
    "max_tokens": 40,
    "answer_budget": "fixed",
}


def _play(out) -> list[tuple[str, str]]:
    run = ExtractionRun(ExtractionConfig.from_dict(CFG), out_dir=out)
    try:
        run.run()
        qs = {e.round: e.text for e in run.events if isinstance(e, QueryIssued)}
        return [(qs[e.round], e.text) for e in run.events if isinstance(e, Generated)]
    finally:
        run.close()


@pytest.mark.slow
def test_three_sessions_at_once_answer_as_one_alone(tmp_path):
    alone = _play(tmp_path / "alone")
    got: dict[int, list] = {}
    errors: list[BaseException] = []

    def session(i: int) -> None:
        try:
            got[i] = _play(tmp_path / f"s{i}")
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    assert len(alone) == 3 and all(a for _, a in alone)
    for i in range(3):
        assert got[i] == alone, f"session {i} differs from the lone run"
