"""Taking part in a table's concurrency control: the lock providers Java writers use (ZooKeeper, file
system, storage-based), Hudi's lock manager and transaction manager, and the parser of the table's
`hoodie.write.lock.*` options."""
from ..errors import LockConfigError
from .config import (
    ConcurrencyConfig,
    ConcurrencyMode,
    is_concurrency_option,
    parse_concurrency_options,
)
from .provider import LockError
from .transaction import TransactionManager

__all__ = ["ConcurrencyConfig", "ConcurrencyMode", "LockConfigError", "LockError", "TransactionManager",
           "is_concurrency_option", "parse_concurrency_options"]
