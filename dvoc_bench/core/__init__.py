"""The vocabulary every floor stands on: geometry, records, scoring, the DVOC stop rule, scene truth,
config declarations, redaction. Pure types and functions; imports nothing of dvoc_bench outside core."""
