"""What the commands other than `nettune run` compute, below the CLI (which only parses
arguments and prints): the dry run and its ETA, the end-of-run summary, `lab up`/`lab down`,
`hosts`, `ceiling`. They use the run layer; the run layer never imports them."""
