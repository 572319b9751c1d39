package orchestrator

import "github.com/slipway-dev/slipway/orchestrator/record"

// The engine's records (tasks, node records, events, drift, as-built,
// recovery) are declared in package record, which the API client and the
// wire types import without linking the engine. These names keep them
// reachable here under the names the engine has always used.

type (
	Action             = record.Action
	AsBuiltRecord      = record.AsBuiltRecord
	Drift              = record.Drift
	DriftKind          = record.DriftKind
	DriftRecord        = record.DriftRecord
	DriftResolved      = record.DriftResolved
	Event              = record.Event
	Filter             = record.Filter
	HardwareAcceptance = record.HardwareAcceptance
	Intent             = record.Intent
	Lifecycle          = record.Lifecycle
	NodeRecord         = record.NodeRecord
	NodeResult         = record.NodeResult
	Outcome            = record.Outcome
	Rebootstrapped     = record.Rebootstrapped
	ReconcileRun       = record.ReconcileRun
	ReconcileStatus    = record.ReconcileStatus
	Recovery           = record.Recovery
	RecoveryStep       = record.RecoveryStep
	Request            = record.Request
	Resolution         = record.Resolution
	Stage              = record.Stage
	SweepReport        = record.SweepReport
	Task               = record.Task
	TaskOptions        = record.TaskOptions
	TaskStatus         = record.TaskStatus
	Transition         = record.Transition
	Verb               = record.Verb
)

const (
	ActionDecommissionNodes    = record.ActionDecommissionNodes
	ActionDeployNodes          = record.ActionDeployNodes
	ActionDestroyNodes         = record.ActionDestroyNodes
	ActionPowerCycle           = record.ActionPowerCycle
	ActionPowerOff             = record.ActionPowerOff
	ActionPowerOn              = record.ActionPowerOn
	ActionPrepareNodes         = record.ActionPrepareNodes
	ActionPrepareSite          = record.ActionPrepareSite
	ActionRedeployNodes        = record.ActionRedeployNodes
	ActionRescueEnter          = record.ActionRescueEnter
	ActionRescueExit           = record.ActionRescueExit
	ActionTestNodes            = record.ActionTestNodes
	ActionValidateDesign       = record.ActionValidateDesign
	ActionVerifyNodes          = record.ActionVerifyNodes
	ActionVerifySite           = record.ActionVerifySite
	DriftHostname              = record.DriftHostname
	DriftKernelOptions         = record.DriftKernelOptions
	DriftLeak                  = record.DriftLeak
	DriftOrphan                = record.DriftOrphan
	DriftOwner                 = record.DriftOwner
	DriftPower                 = record.DriftPower
	DriftStatus                = record.DriftStatus
	DriftTags                  = record.DriftTags
	EventDecommissionCompleted = record.EventDecommissionCompleted
	EventDecommissionFailed    = record.EventDecommissionFailed
	EventDecommissionManual    = record.EventDecommissionManual
	EventDecommissionStarted   = record.EventDecommissionStarted
	EventDriftDetected         = record.EventDriftDetected
	EventDriftResolved         = record.EventDriftResolved
	EventOnboardingCompleted   = record.EventOnboardingCompleted
	EventOnboardingFailed      = record.EventOnboardingFailed
	EventOnboardingManual      = record.EventOnboardingManual
	EventOnboardingStarted     = record.EventOnboardingStarted
	LifecycleCancelled         = record.LifecycleCancelled
	LifecycleDeleted           = record.LifecycleDeleted
	LifecycleDeployed          = record.LifecycleDeployed
	LifecycleDeploying         = record.LifecycleDeploying
	LifecycleFailed            = record.LifecycleFailed
	LifecycleNew               = record.LifecycleNew
	LifecyclePreparing         = record.LifecyclePreparing
	LifecycleReady             = record.LifecycleReady
	LifecycleReleased          = record.LifecycleReleased
	LifecycleReleasing         = record.LifecycleReleasing
	MaxCorrelationLen          = record.MaxCorrelationLen
	MaxFilterNames             = record.MaxFilterNames
	MaxFilterSets              = record.MaxFilterSets
	MaxFilterValueLen          = record.MaxFilterValueLen
	MaxFilterValues            = record.MaxFilterValues
	OutcomeCancelled           = record.OutcomeCancelled
	OutcomeFailed              = record.OutcomeFailed
	OutcomeManual              = record.OutcomeManual
	OutcomeQueued              = record.OutcomeQueued
	OutcomeRunning             = record.OutcomeRunning
	OutcomeSucceeded           = record.OutcomeSucceeded
	RecAbort                   = record.RecAbort
	RecMarkBroken              = record.RecMarkBroken
	RecMarkFixed               = record.RecMarkFixed
	RecRelease                 = record.RecRelease
	ResolveAccept              = record.ResolveAccept
	ResolveRelease             = record.ResolveRelease
	ResolveRepair              = record.ResolveRepair
	StageAsBuilt               = record.StageAsBuilt
	StageBootstrap             = record.StageBootstrap
	StageCommission            = record.StageCommission
	StageConfigure             = record.StageConfigure
	StageDeleted               = record.StageDeleted
	StageDeleting              = record.StageDeleting
	StageDeploy                = record.StageDeploy
	StageDeployed              = record.StageDeployed
	StageIdentify              = record.StageIdentify
	StageOOBPrepare            = record.StageOOBPrepare
	StagePending               = record.StagePending
	StagePower                 = record.StagePower
	StagePowered               = record.StagePowered
	StageReady                 = record.StageReady
	StageReleased              = record.StageReleased
	StageReleasing             = record.StageReleasing
	StageRescue                = record.StageRescue
	StageRescueExit            = record.StageRescueExit
	StageRescueMode            = record.StageRescueMode
	StageTested                = record.StageTested
	StageTesting               = record.StageTesting
	StageVerified              = record.StageVerified
	StageVerify                = record.StageVerify
	TaskCancelled              = record.TaskCancelled
	TaskFailed                 = record.TaskFailed
	TaskPartiallySucceeded     = record.TaskPartiallySucceeded
	TaskQueued                 = record.TaskQueued
	TaskRunning                = record.TaskRunning
	TaskSucceeded              = record.TaskSucceeded
	VerbCancel                 = record.VerbCancel
	VerbRerun                  = record.VerbRerun
	VerbRestartClean           = record.VerbRestartClean
	VerbResume                 = record.VerbResume
	VerbRetry                  = record.VerbRetry
)

var (
	Actions          = record.Actions
	DriftKinds       = record.DriftKinds
	EventTypes       = record.EventTypes
	Resolutions      = record.Resolutions
	CheckCorrelation = record.CheckCorrelation
	DriftKey         = record.DriftKey
	LifecycleAt      = record.LifecycleAt
	ParseAction      = record.ParseAction
	ParseDriftKind   = record.ParseDriftKind
	ParseResolution  = record.ParseResolution
)
