"""parity.timing"""
