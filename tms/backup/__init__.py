"""Backups of a table to another root (another bucket or store): versions that share unchanged files through
manifests, their expiry (backup-clean), and the restore of a version to a new base path. See
docs/operating/backups.md for the layout and why it is so."""
