package maas

import "github.com/slipway-dev/slipway/drivers"

// New is the registry factory of the MAAS server driver.
func New(cfg drivers.Config) (drivers.Server, error) {
	d, err := NewDriver(cfg)
	if err != nil {
		return nil, err
	}
	return d, nil
}

var _ drivers.Server = (*Driver)(nil)
