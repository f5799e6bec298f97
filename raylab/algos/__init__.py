"""Pure math: returns, losses, update rules and action selection. No Ray, no envs, no logging."""
