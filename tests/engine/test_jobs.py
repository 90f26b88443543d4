"""Background jobs outlive the browser session that started them: the process lists those still running, by name
and owner, so that a page opened later (another tab, a reload) follows one; a finished job leaves the list."""

from __future__ import annotations

from engine.jobs import Job, running_jobs


def test_a_running_job_is_found_by_name_and_owner_and_leaves_when_it_ends():
    job = Job("compare", lambda progress, stop: stop.wait(60), owner="owner-a", state={"cmp_dir": "x"}).start()
    other = Job("compare", lambda progress, stop: stop.wait(60)).start()  # the single-user owner (None)
    try:
        assert running_jobs("compare", "owner-a") == [job] and job.state == {"cmp_dir": "x"}
        assert running_jobs("compare", None) == [other], "another owner's job is not followed"
        assert running_jobs("sweep", "owner-a") == [] and running_jobs("compare", "owner-b") == []
        assert running_jobs(any_owner=True) == [job, other], "oldest first"
    finally:
        job.stop()
        other.stop()
        job.wait(10)
        other.wait(10)
    assert job.result is True and job.finished is not None
    assert running_jobs(any_owner=True) == [], "a job that ended is no longer listed"


def test_a_job_that_fails_leaves_the_list_with_its_error():
    def fail(progress, stop):
        raise ValueError("bad input")

    job = Job("audit", fail).start()
    job.wait(10)
    assert job.error == "ValueError: bad input" and running_jobs("audit") == []
