export * from 'preact'
