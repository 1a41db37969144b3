"""Bundled data files (the sample workflows used by ``em-plugin demo``)."""
