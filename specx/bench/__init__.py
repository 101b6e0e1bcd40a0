"""specx bench and specx tune: the prompt suite, measurements, reports, saved results."""
