//! Smaller holes: template quoting, inherited secrets, background caps, spoofed listings, refusal wording.
