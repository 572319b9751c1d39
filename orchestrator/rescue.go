package orchestrator

// Rescue mode (rescue_enter, rescue_exit): the provisioner boots a
// deployed machine into an ephemeral rescue system, and back to its
// deployed OS. Both run recoverStage (decommission.go) with the driver's
// rescue and exit-rescue recovery actions. A node in rescue mode keeps
// its deployment: its record's stage is rescue-mode, its machine's state
// one of deployedStates (sweep.go), and the node's introspection token
// stays valid; rescue_exit brings it back to deployed.
