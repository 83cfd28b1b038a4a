"""Seen before: fingerprints of crashes, and the bugs a new crash is the same as."""
