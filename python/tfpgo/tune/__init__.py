"""`--tune`: the O in PGO. From the compiled program's dispatch profile and
TensorFlow's, propose changes (`candidates`), measure each against the current
best and keep what wins (`loop`), then profile the kept program again."""
