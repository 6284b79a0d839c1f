"""Lock benchmark: what one transaction under the table's lock costs (take the lock, reload the timeline,
generate an instant time, release), per lock provider, without and with Hudi's default clock skew wait (200 ms).

    python bench/locks.py [--rounds 30]

ZooKeeper comes from Debian's zookeeper package (as the lock tests start it: a private server on a free
port); the file-system and storage-based locks live in a temporary table folder. Figures: median and maximum
milliseconds per transaction. What to expect: the skew wait dominates (every new time waits it out while the
lock is held, as Hudi's SkewAdjustingTimeGenerator does), and the lock itself costs a few milliseconds."""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from concurrency_support import create_table, zk_options  # noqa: E402
from zookeeper_server import ZookeeperServer  # noqa: E402

from tms.hudi.locks import TransactionManager, parse_concurrency_options  # noqa: E402
from tms.hudi.table.hudi_table import HudiTable  # noqa: E402

LOCKS = "org.apache.hudi.client.transaction.lock."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tms-bench-locks-"))
    zookeeper = ZookeeperServer(tmp / "zookeeper")
    try:
        path = tmp / "t"
        create_table(path)
        table = HudiTable.load(str(path))
        providers = {"zookeeper": zk_options(zookeeper, "bench"),
                     "filesystem": {"hoodie.write.lock.provider": LOCKS + "FileSystemBasedLockProvider"},
                     "storage": {"hoodie.write.lock.provider": LOCKS + "StorageBasedLockProvider"}}
        for kind, options in providers.items():
            for skew in ("0", "200"):
                config = parse_concurrency_options(
                    {**options, "hoodie.time.generator.max_expected_clock_skew_ms": skew},
                    base_path=str(path), table_name=table.name)
                with TransactionManager(table, config) as transactions:
                    transactions.new_instant_time()  # connect
                    samples = []
                    for _ in range(args.rounds):
                        started = time.perf_counter()
                        transactions.new_instant_time()
                        samples.append((time.perf_counter() - started) * 1000)
                print(f"{kind:10s} skew {skew:>3s} ms: transaction median {statistics.median(samples):6.1f} ms, "
                      f"max {max(samples):6.1f} ms")
    finally:
        zookeeper.stop()


if __name__ == "__main__":
    main()
