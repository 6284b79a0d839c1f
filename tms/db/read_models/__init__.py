"""Read models: the queries of views that span several tables (the manager's alert rules, the metrics scraped
from the database), kept here with every other query of the metadata database."""
from .metrics import cluster_rows, engine_rows
from .monitoring import MonitorReads

__all__ = ["MonitorReads", "cluster_rows", "engine_rows"]
