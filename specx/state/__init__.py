"""What specx keeps and where: directories, the config file and settings, atomic locked writes, this machine's identity."""
