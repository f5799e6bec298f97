"""Driver-side plain classes every topology shares: progress counters, stop conditions, run outputs."""

from raylab.driver.monitor import RunMonitor, RunSummary

__all__ = ["RunMonitor", "RunSummary"]
