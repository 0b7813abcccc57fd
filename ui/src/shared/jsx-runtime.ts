export * from 'preact/jsx-runtime'
