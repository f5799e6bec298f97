"""Driver-side plain classes every topology shares: the loop, progress counters, stop conditions, run outputs.

Nothing is imported here: ``raylab.train`` reads ``raylab.driver.stop`` before a config is checked, and a
user's mistake should cost an import of hydra and the config, not of torch (raylab.driver.monitor)."""
