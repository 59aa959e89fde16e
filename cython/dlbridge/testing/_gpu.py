"""(clauses of this group: being written)"""
