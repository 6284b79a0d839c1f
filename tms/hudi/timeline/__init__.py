"""Hudi's timeline: instants and their times, the active timeline, the serde of its metadata, its zone, the
changes of its folders, and conflict checks at commit."""
