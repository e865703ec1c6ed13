"""A paper's claims as data (papers/<paper>/claims.yaml) checked on results; see engine."""
