"""Saved sweeps, read back without running anything: the list with each grid's progress, a sweep's finished cells,
and a folder that holds no sweep as one clear error."""

import json

import pandas as pd
import pytest

from engine.config import SweepConfig
from engine.errors import ConfigError
from engine.saved import list_sweeps, sweep_state
from engine.sweep import grid, load_sweep


def _saved(folder, cfg: SweepConfig, rows: int, failed=()) -> None:
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text(json.dumps({"config": cfg.to_dict(), "cells": len(grid(cfg))}))
    cells = [{**c, "asr@1": 0.5, "asr@2": 1.0, "asr@5": 1.0, "n": 3} for c in grid(cfg)[:rows]]
    if cells:
        pd.DataFrame(cells).to_csv(folder / "sweep_cells.csv", index=False)
    if failed:
        (folder / "sweep_failed.json").write_text(json.dumps(list(failed)))


def test_a_sweep_cut_short_is_listed_with_its_count_and_reads_back_its_finished_cells(tmp_path):
    cfg = SweepConfig(
        corpora=("clinic_handbook",), retrievers=("minilm", "bm25"), query_sets=("clinic_handbook",), targets=("pii",)
    )
    other = SweepConfig(corpora=("clinic_handbook",), retrievers=("bm25",), query_sets=("clinic_handbook",))
    _saved(tmp_path / "a", cfg, 1, failed=[{**grid(cfg)[1], "error": "boom"}])
    _saved(tmp_path / "b", other, len(grid(other)))
    (tmp_path / "c").mkdir()  # not a sweep: skipped
    listed = {r["id"]: r for r in list_sweeps(tmp_path)}
    assert set(listed) == {"a", "b"}
    assert sweep_state(listed["a"]) == " · unfinished (1 of 2 cells)" and listed["a"]["grid"].count(" × ") == 3
    assert sweep_state(listed["b"]) == "" and listed["b"]["complete"]
    loaded_cfg, result = load_sweep(tmp_path / "a")
    assert loaded_cfg == cfg and not result.complete and len(result.cells) == 1
    assert [f["error"] for f in result.failed] == ["boom"]  # the cell that failed, not yet retried
    _, done = load_sweep(tmp_path / "b")
    assert done.complete and not done.failed


def test_a_folder_without_a_sweep_is_one_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="holds no readable sweep"):
        load_sweep(tmp_path)
    (tmp_path / "sweep.json").write_text("{not json")
    with pytest.raises(ConfigError, match="holds no readable sweep"):
        load_sweep(tmp_path)
