"""parity.report"""
