"""The file system view: file names, partitions and their paths, file groups and slices, and the file groups
pending plans hold."""
