#compdef specx

_specx_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _SPECX_COMPLETE=complete_zsh specx)
}

compdef _specx_completion specx
