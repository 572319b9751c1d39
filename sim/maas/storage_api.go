package maas

// routesStorage registers block devices, partitions, volume groups,
// logical volumes, node devices and storage layouts.
func (s *Server) routesStorage() {}
