"""Leadership, in one place: the manager's leader lease and its fencing (`lease`), and the watch every manager
and service process keeps for a vacant lease (`watch`, the `no_leader` alert). Their SQL is the lease
repository's (tms.db.LeaseRepo)."""
from .lease import LEASE_NAME, LeaderLease, NotLeader
from .watch import LeaderWatch

__all__ = ["LEASE_NAME", "LeaderLease", "LeaderWatch", "NotLeader"]
