package web

// SetBulkSizes makes s read a bulk action's filter page items at a time
// and a page's bulk action report its progress every items, so that a
// test crosses pages and progress lines with few items.
func SetBulkSizes(s *Server, page, every int) { s.bulkSizes = &[2]int{page, every} }
