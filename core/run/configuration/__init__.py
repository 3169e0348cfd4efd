"""What a run is given, checked: the TOML config and its options and secrets, the plugin registry
and its component specs, the components built from them, the selected tasks and their reference decks.

In the order ``arena run`` uses them: :mod:`.registry` (plugins found and loaded),
:mod:`.plugin_specs` (what the registry records), :mod:`.config` with :mod:`.config_options` and
:mod:`.config_secrets` (the run config, every problem at once), :mod:`.mixed` (several datasets),
:mod:`.components` (contexts, backends and model clients), :mod:`.tasks` (tasks selected by id and
limit), :mod:`.requirements` (task requirements vs agent capabilities) and :mod:`.datacheck` (every
reference deck opens before the first pair).
"""
