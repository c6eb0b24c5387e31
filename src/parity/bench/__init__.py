"""parity.bench"""
