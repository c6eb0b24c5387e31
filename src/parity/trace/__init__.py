"""parity.trace"""
