"""Saved sweeps, read back without running anything: the list with each grid's progress, a sweep's finished cells,
and a folder that holds no sweep as one clear error."""

import json

import pandas as pd
import pytest

from engine.config import SweepConfig
from engine.errors import ConfigError
from engine.sweep import grid, list_sweeps, load_sweep, sweep_state


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


def _grid2() -> SweepConfig:
    return SweepConfig(
        corpora=("clinic_handbook",),
        retrievers=("bm25",),
        query_sets=("clinic_handbook",),
        targets=("pii", "diagnosis"),
        limit=2,
    )


def test_a_record_written_before_a_field_existed_still_reads_as_the_same_grid(tmp_path):
    """A later version adds a field to SweepConfig: the saved sweeps keep their cells, their key and their Resume."""
    from engine.sweep import finished_cells, sweep_key

    cfg = _grid2()
    _saved(tmp_path / "old", cfg, 1)
    record = json.loads((tmp_path / "old" / "sweep.json").read_text())
    del record["config"]["chunk_overlap"]  # as if written before chunk_overlap existed
    (tmp_path / "old" / "sweep.json").write_text(json.dumps(record))
    (listed,) = list_sweeps(tmp_path)
    assert sweep_state(listed) == " · unfinished (1 of 2 cells)"
    assert len(finished_cells(cfg, tmp_path / "old")) == 1 and len(load_sweep(tmp_path / "old")[1].cells) == 1
    assert sweep_key(cfg) == "930d55760aca7c4a"  # a key is a folder name: it never changes for the same grid


@pytest.mark.parametrize(
    ("damage", "readable"),
    [
        ("torn", 1),  # a kill mid-write: the last line cut
        ("extra fields", 1),  # a malformed line
        ("twice", 1),  # the same cell written twice: the first kept
        ("renamed header", 0),  # no cell can be read
    ],
)
def test_a_damaged_cells_file_gives_what_can_be_read_and_the_list_agrees(tmp_path, damage, readable):
    cfg = _grid2()
    _saved(tmp_path / "s", cfg, 1)
    path = tmp_path / "s" / "sweep_cells.csv"
    text = path.read_text()
    lines = text.splitlines()
    if damage == "torn":
        text += "clinic_handbook,bm25,clin\n"
    elif damage == "extra fields":
        text += lines[1] + ",1,2,3\n"
    elif damage == "twice":
        text += lines[1] + "\n"
    else:
        text = text.replace("target", "tgt", 1)
    path.write_text(text)
    _, result = load_sweep(tmp_path / "s")
    (listed,) = list_sweeps(tmp_path)
    assert len(result.cells) == listed["done"] == readable and not result.complete
    assert result.damaged >= 1 and sweep_state(listed) == f" · unfinished ({readable} of 2 cells)"


def test_a_sweep_resumed_over_a_damaged_file_keeps_it_beside_and_runs_what_is_missing(tmp_path):
    """The rows it can read are kept (not run again), the rest run, and the file as it was stays beside."""
    from engine.sweep import run_sweep

    cfg = _grid2()
    first = run_sweep(cfg, out_dir=tmp_path)
    assert first.complete
    path = tmp_path / "sweep_cells.csv"
    lines = path.read_text().splitlines()
    damaged = "\n".join(lines[:2]) + "\nclinic_handbook,bm25,clin\n"  # the second cell torn by a kill
    path.write_text(damaged)
    kept = pd.read_csv(path, on_bad_lines="skip").iloc[0].to_dict()
    again = run_sweep(cfg, out_dir=tmp_path)
    assert again.complete and len(pd.read_csv(path)) == 2
    assert pd.read_csv(path).iloc[0].to_dict() == kept, "the readable cell is kept as it was"
    assert (tmp_path / "sweep_cells.damaged.csv").read_text() == damaged


def test_a_damaged_sweep_record_is_listed_not_hidden(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "sweep.json").write_text('{"config": ')
    (listed,) = list_sweeps(tmp_path)
    assert listed["damaged"] and sweep_state(listed) == " · damaged: Open says why" and listed["complete"]


def test_grids_that_differ_in_one_number_get_labels_that_can_be_told_apart(tmp_path):
    """A select box of equal labels cannot be chosen from (the browser tour picked the first whatever was clicked)."""
    for i, limit in enumerate((3, 4)):
        _saved(tmp_path / f"{i}abcdef0123", _grid2().replace(limit=limit), 1)
    labels = [r["label"] for r in list_sweeps(tmp_path)]
    assert len(set(labels)) == 2 and {"first 3 questions", "first 4 questions"} <= {
        part for label in labels for part in label.split(" · ")
    }
