"""The digest the event path decides on agrees with the timeline: built from events it equals the one
rebuilt from the timeline, and its pre-checks say what the library's triggers say."""
from datetime import timedelta

import pytest
from planning_support import ModelledTable, now, policy, rec, run_compaction

from tms.planning.compaction import plan_compaction
from tms.planning.digest import TimelineDigest
from tms.planning.triggers import clustering_trigger, compaction_trigger

SERVICES = frozenset({"compaction", "clustering", "clean", "rollback"})
POLICIES = [policy(**{"hoodie.compact.inline.max.delta.commits": n, "hoodie.compact.inline.trigger.strategy": s,
                      "hoodie.compact.inline.max.delta.seconds": 3600, "hoodie.clustering.async.max.commits": n})
            for n in (1, 2, 3) for s in ("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME")]


def _agree(t, digest, at):
    table = t.table()
    rebuilt = TimelineDigest.of(table, digest, at, SERVICES)
    assert (digest.compacted, digest.clustered, digest.counted, set(digest.pending_writes)) == \
        (rebuilt.compacted, rebuilt.clustered, rebuilt.counted, set(rebuilt.pending_writes))
    for p in POLICIES:
        for later in (timedelta(), timedelta(hours=2)):
            assert digest.compaction_may_be_due(p, at + later) == compaction_trigger(table, p, at + later).due
        assert digest.clustering_may_be_due(p) == clustering_trigger(table, p).due


@pytest.mark.parametrize("version", [6, 8])
def test_a_digest_built_from_events_equals_the_timeline_s(tmp_path, version):
    t = ModelledTable(tmp_path / "t", version=version)
    at = now()
    digest = TimelineDigest.of(t.table(), None, at, SERVICES)

    def write(records, *, leave_inflight=False):
        instant = t.write(records, leave_inflight=leave_inflight)
        digest.observe(instant, "deltacommit", "inflight" if leave_inflight else "completed", at)
        return instant

    write([rec(i, 10) for i in range(6)])
    _agree(t, digest, at)
    write([rec(0, 20)])
    pending = write([rec(1, 30)], leave_inflight=True)
    write([rec(2, 40)])
    _agree(t, digest, at)

    tc = plan_compaction(t.table(), policy(**{"hoodie.compact.inline.max.delta.commits": 1}), at).instant
    t.complete(pending)
    digest.observe(pending, "deltacommit", "completed", at)
    run_compaction(t.table(), tc)
    digest.observe(tc, "commit", "completed", at)  # a compaction completes as a commit
    _agree(t, digest, at)
    write([rec(3, 50)])
    write([rec(3, 60)])
    _agree(t, digest, at)


def test_an_empty_clean_attempt_counts_what_was_pending_at_it_once_it_completes(tmp_path):
    """Issue 36: after a clean attempt that found nothing, a compaction pending at the attempt (an older instant
    time) counts once it completes, from its event as from the timeline; an older write that was not pending
    then does not."""
    t = ModelledTable(tmp_path / "t")
    t.write([rec(i, 10) for i in range(3)], "insert")
    t.write([rec(i, 20) for i in range(3)])
    planned = plan_compaction(t.table(), policy(**{"hoodie.compact.inline.max.delta.commits": 1}), now())
    assert planned is not None
    tc = planned.instant
    newest = t.write([rec(i, 25) for i in range(3)])
    digest = TimelineDigest.of(t.table(), None, now(), SERVICES)
    digest.attempted("clean", newest, [tc], "nothing to clean yet")
    assert digest.counted["clean"] == [] and digest.findings["clean"] == [newest, "nothing to clean yet"]
    run_compaction(t.table(), tc)
    digest.observe(tc, "commit", "completed", now())
    assert digest.counted["clean"] == [tc]
    assert TimelineDigest.of(t.table(), digest, now(), SERVICES).counted["clean"] == [tc]
    digest.observe(t.write([rec(i, 30) for i in range(3)]), "deltacommit", "completed", now())
    assert len(digest.counted["clean"]) == 2
    assert TimelineDigest.of(t.table(), digest, now(), SERVICES).counted == digest.counted
