"""absl binaries: `python -m experiments.<name> --config configs/<name>.py[:arg] --workdir DIR`."""
