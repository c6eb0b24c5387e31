"""A thin command line over the public API. Commands are loaded lazily, so ``parity trace``
starts without importing torch."""
