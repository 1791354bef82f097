"""Where measured time goes, and the law it obeys: every profiled picosecond is
charged once at each level (`parts`: the splitting rules) and the conservation
checker (`conservation`) verifies every output of a run against that law."""
