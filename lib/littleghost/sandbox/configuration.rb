# frozen_string_literal: true

# Placeholder: LittleGhost.configure is filled in with the configuration layer (SPEC §23).
