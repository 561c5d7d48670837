"""Root conftest: puts tests/ on sys.path so test modules can `from waiting import wait_until`."""
