"""The local-generation status that scripts/install.sh writes while it builds llama.cpp in the background."""

import time

from engine.generators.runtime import LocalRuntime, local_runtime


def test_status_file_states(tmp_path):
    f = tmp_path / "llama-status"
    f.write_text(f"state=building\nstarted={time.time() - 60:.0f}\nupdated=0\nstep=installing the local models\n")
    rt = local_runtime(f)
    assert rt.state == "building" and not rt.ready and 55 < rt.elapsed_s < 120
    assert "installing the local models, 1 of about 7 minutes" in rt.message()
    f.write_text("state=failed\nstarted=oops\nstep=the build failed (exit 2)\n")
    rt = local_runtime(f)
    assert rt.state == "failed" and rt.elapsed_s is None and "exit 2" in rt.message()
    f.write_text("state=ready\n")
    assert local_runtime(f).ready  # llama_cpp is installed in the test environment
    assert local_runtime(tmp_path / "absent").ready  # no status file: installed in the foreground
    f.write_bytes(b"\xff\xfe garbage")
    assert local_runtime(f).ready
    assert "bash scripts/install.sh" in LocalRuntime("missing").message()
