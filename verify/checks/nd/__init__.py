"""ND checks (Neural dependencies): closed forms, CovLasso, Conjecture 1, Sec 3 training."""
