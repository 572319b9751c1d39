package lab

import "github.com/slipway-dev/slipway/sim/maas"

// The image a machine runs: its region records the image a deploy took
// (the OS, the release and, for an uploaded image, the SHA-256 of the set
// it installed: sim/maas bootres_deploy.go) and tells the lab when the
// deployment ends; the machine keeps it until it is released, and its node
// agent reports it with every boot action report (agent.go). Tests and
// audits count "deployed with the design's image" from here, not from the
// engine.

// Image returns the image the machine was deployed with (zero when it runs
// no deployed OS).
func (m *Machine) Image() maas.DeployedImage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.image
}

// DeployedImages returns, by machine name, the image each deployed machine
// runs (machines running no deployed OS are absent).
func (l *Lab) DeployedImages() map[string]maas.DeployedImage {
	out := map[string]maas.DeployedImage{}
	for _, m := range l.Machines() {
		if img := m.Image(); img.OSystem != "" {
			out[m.Name] = img
		}
	}
	return out
}
