"""tfpgo in TensorBoard: a plugin tab beside xprof's, on the same logdir."""
