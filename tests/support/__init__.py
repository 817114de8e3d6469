"""Test helpers shared by the suite (schema validation, reference data, Pulumi mocks)."""
