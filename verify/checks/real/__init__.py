"""Checks on trained networks, judged on one data source for ND Table 1 and RD Eq 11-12 / Table 2."""
