package redfish

// storagePath is the system's Storage collection.
var storagePath = systemPath + "/Storage"

// Drive is a physical drive behind the system's RAID controller.
type Drive struct {
	Bay           int // its bay; its Id is Disk.Bay.<bay>
	Model         string
	CapacityBytes int64
}
