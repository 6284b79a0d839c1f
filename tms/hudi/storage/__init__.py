"""Storage of a table (local and object stores) and the paths inside it."""
