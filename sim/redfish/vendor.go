package redfish

// Vendors whose answer shapes the lab can take (Options.Vendor).
const (
	vendorDell = "dell" // iDRAC
)
