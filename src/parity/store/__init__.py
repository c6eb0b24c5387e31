"""parity.store"""
