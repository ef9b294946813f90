"""Text pipeline: cleaning, tokenisation, term weighting. Pure functions over strings."""
